"""From the records to what a reader sees: the README's generated section, the pages under docs/
(the side-by-side reader) and the plots."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def relative(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(Path(path).resolve())


def regenerate(results, readme, notebooks_dir):
    """Rewrite the README's generated section, the plots under `results`/plots and the pages under
    the README's docs/ from `results`/records.jsonl."""
    from common import records
    from runner import install_costs, margins, plain_loops, plots, reader, report

    results, readme = Path(results), Path(readme)
    all_records = records.read_records(results / "records.jsonl")
    if not readme.exists():
        print(f"[run] {readme} not found: tables not written")
        return
    plot_paths = {task: relative(path) for task, path in plots.plot_tasks(all_records, results / "plots").items()}
    readme_folder = readme.resolve().parent

    def link(path):
        return os.path.relpath(ROOT / path, readme_folder)  # ROOT / an absolute path is that path

    costs = install_costs.read(results)
    markdown = report.results_markdown(all_records, plot_paths, link)
    if costs:
        markdown += "\n\n" + install_costs.markdown(costs)
    loops_table = plain_loops.markdown(all_records, plain_loops.read(results))
    if loops_table:
        markdown += "\n\n" + loops_table
    markdown += "\n\n" + margins.markdown(all_records, margins.read_broken(results))
    report.update_readme(readme, markdown)
    print(f"[run] tables regenerated in {relative(readme)} from {len(all_records)} record(s)")
    docs = readme_folder / "docs"
    reader.write_site(docs, all_records, costs, notebooks_dir, ROOT)
    print(f"[run] side-by-side reader regenerated in {relative(docs)}")
