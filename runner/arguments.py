"""The command line of run_all.py: its options, their help text, and the checks that refuse a bad
value before anything is built or run."""
import argparse
from pathlib import Path

from common.params import DATA_CHOICES, PROFILES, TASKS
from common.paths import REPOSITORY_ROOT
from runner.frameworks import DEFAULT_VARIANT, FRAMEWORKS, RUNNABLE, variants

DESCRIPTION = """\
Run the Rosetta Stone: every selected framework × task notebook, one at a time, each on its
framework's own kernel; one record per run; the README tables and plots regenerated at the end.

  python run_all.py --list                                   what can run here
  python run_all.py --frameworks pytorch --profile quick     run, record, regenerate README
  python run_all.py --self-test                              the test suite
  python run_all.py --jupyter                                JupyterLab on the built kernels

On first use it makes its own environment (envs/runner.txt) and each framework's (envs/<name>.txt)
in a cache outside the clone ($ROSETTA_CACHE, default ~/.cache/dl-rosetta), reused while the
requirements file is unchanged. On a host whose nvidia-smi lists a GPU (--accelerator auto) it
builds each framework's CUDA environment (envs/<name>.cuda.txt) instead and runs the notebooks on
the GPU. --use-current-python skips all of that and runs every notebook on the interpreter that
runs this script (e.g. a GPU host with its own stack and papermill).
"""


def comma_list(valid, what):
    """An argparse type: a comma-separated subset of `valid` (case-insensitive), or 'all'."""
    lookup = {value.lower(): value for value in valid}

    def parse(text):
        if text.strip().lower() == "all":
            return list(valid)
        chosen = []
        for item in (part.strip() for part in text.split(",")):
            if item.lower() not in lookup:
                unavailable = FRAMEWORKS.get(item.lower())
                if unavailable is not None and unavailable.reason:
                    raise argparse.ArgumentTypeError(
                        f"{unavailable.title} cannot run here: {unavailable.reason}")
                raise argparse.ArgumentTypeError(
                    f"unknown {what} {item!r}; valid {what}s: {', '.join(valid)} (or 'all')")
            if lookup[item.lower()] not in chosen:
                chosen.append(lookup[item.lower()])
        return chosen

    return parse


def positive_number(unit=None):
    """An argparse type: a whole number of at least 1; `unit` ("seconds") names it in messages."""
    of_unit = f" of {unit}" if unit else ""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number{of_unit}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be a positive number{of_unit}, not {value}")
        return value

    return parse


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="run_all.py", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frameworks", type=comma_list(list(RUNNABLE), "framework"),
                        default=list(RUNNABLE),
                        help=f"comma-separated, or 'all' (default). One of: {', '.join(RUNNABLE)}")
    parser.add_argument("--tasks", type=comma_list(TASKS, "task"), default=list(TASKS),
                        help=f"comma-separated, or 'all' (default). One of: {', '.join(TASKS)}")
    parser.add_argument("--profile", choices=PROFILES, default="quick",
                        help="full: the 2018 hyper-parameters; quick (default): minutes per "
                             "notebook on 2 CPU cores; smoke: seconds, for tests (never shown in "
                             "the README)")
    parser.add_argument("--data", choices=DATA_CHOICES, default="auto",
                        help="auto (default): real data when a source answers, else synthetic, "
                             "said loudly; real: fail when no source answers; synthetic: never "
                             "fetch")
    parser.add_argument("--timeout", type=positive_number("seconds"), default=3600,
                        help="seconds one notebook may run before it is stopped and recorded as "
                             "failed (default 3600)")
    extra_variants = sorted({variant for framework in RUNNABLE.values() for task in TASKS
                             for variant in variants(framework, task)} - {DEFAULT_VARIANT})
    parser.add_argument("--variants", type=comma_list((DEFAULT_VARIANT, *extra_variants), "variant"),
                        default=[DEFAULT_VARIANT, *extra_variants],
                        help="all (default): also run each notebook's variants (torch.compile, "
                             "XLA, bf16, …) as rows of their own; default: the plain fp32 run only; "
                             "variants' names, comma-separated (e.g. default,bf16): those only, in "
                             "the notebooks that have them, each round running them side by side")
    parser.add_argument("--emulate-bf16", action="store_true",
                        help="run the bf16 variants even where bf16 is not native (no AVX512_BF16, "
                             "AMX or Arm BF16; a GPU before compute capability 8.0): the framework "
                             "emulates it, so the checks hold but the speed is not the hardware's; "
                             "the record says so and the tables show no figure for it (default: "
                             "such a variant is recorded as skipped)")
    parser.add_argument("--repeat", type=positive_number(), default=1, metavar="N",
                        help="run each notebook N times, each in a fresh kernel, the whole "
                             "selection once before the next round; the tables show the median "
                             "and the spread of the N runs (default 1)")
    parser.add_argument("--threads", type=positive_number(), default=None, metavar="N",
                        help="CPU threads every framework may use, pinned before it is imported "
                             "and read back into the record (default: the physical cores this "
                             "process may use; FCN5 runs once per count 1, 2, 4, … up to them)")
    parser.add_argument("--devices", choices=("1", "all", "1,all"), default="1,all",
                        help="MultiGPU: train on 1 device, on all of them (every visible GPU, or 2 CPU "
                             "devices on a CPU-only host), or both (default: 1,all)")
    parser.add_argument("--pipelines", type=comma_list(["ram", "disk"], "pipeline"), default=["ram", "disk"],
                        help="MultiGPU: images held in RAM, decoded from PNG files per batch, or both "
                             "(default: ram,disk)")
    parser.add_argument("--nodes", type=comma_list(["1", "2"], "node count"), default=["1"],
                        help="MultiGPU: on this machine alone (1), or as two nodes on it (2: the "
                             "commands of the notebook's closing section, as printed, once per node "
                             "on localhost, for the frameworks that print them), or both (default: 1)")
    parser.add_argument("--resume", action="store_true",
                        help="skip framework × task pairs that already have an ok record for "
                             "this hardware, profile and data choice")
    parser.add_argument("--list", action="store_true",
                        help="print the framework × task matrix and what can run here, then exit")
    parser.add_argument("--accelerator", choices=("auto", "cpu", "cuda"), default="auto",
                        help="auto (default): cuda when nvidia-smi lists a GPU, else cpu; cpu: the "
                             "CPU builds (envs/<name>.txt), notebooks on the CPU even on a GPU "
                             "host; cuda: the CUDA builds (envs/<name>.cuda.txt), notebooks on "
                             "the GPU, stopping here when there is none")
    parser.add_argument("--use-current-python", action="store_true",
                        help="run every notebook on this interpreter (which needs papermill and "
                             "ipykernel, and the frameworks) instead of building environments")
    parser.add_argument("--docs", action="store_true",
                        help="regenerate the README tables and the side-by-side reader (docs/, "
                             "beside the README) from the records, then exit")
    parser.add_argument("--measure-install", action="store_true",
                        help="build (when missing) and measure the runner's and the selected "
                             "frameworks' environments: build time, size on disk, cold import time "
                             "(run it alone on the machine); then regenerate the tables and exit")
    parser.add_argument("--import-records", type=Path, metavar="PATH",
                        help="add the records of another machine's run (its results folder, or its "
                             "records.jsonl beside a notebooks/ folder) to this one's, with their "
                             "executed notebooks, skipping records already here; then regenerate "
                             "the tables and exit")
    parser.add_argument("--jupyter", nargs="?", const=0, type=positive_number(), metavar="PORT",
                        help="start JupyterLab from the runner's environment on localhost (PORT, "
                             "default the first free one from 8888), in notebooks/, with every "
                             "built framework kernel and `common` importable; print its URL and "
                             "the papermill command line for one notebook; Ctrl-C stops it")
    parser.add_argument("--bundle", type=Path, metavar="DIR",
                        help="write into DIR what an offline host needs to run the selection "
                             "(--frameworks, --tasks, --profile) there: the wheels its Python lacks "
                             "(papermill, ipykernel, keras where selected) and the selected tasks' "
                             "data cut to the profile, under --bundle-limit-mb; then exit")
    parser.add_argument("--bundle-python", default="3.12", metavar="X.Y",
                        help="--bundle: the offline host's Python version (default 3.12, the lent H200's)")
    parser.add_argument("--bundle-host-packages", type=Path, metavar="FILE",
                        help="--bundle: the packages the offline host already has, one name a line "
                             "(default envs/gpu-host.packages, the lent H200's image)")
    parser.add_argument("--bundle-limit-mb", type=positive_number("MiB"), default=40, metavar="MIB",
                        help="--bundle: the bundle's size limit (default 40 MiB: with the working tree "
                             "it travels beside, under the device's 64 MiB a call); data that does not "
                             "fit is left out, and its task runs on its synthetic stand-in there")
    parser.add_argument("--from-bundle", type=Path, metavar="DIR",
                        help="on an offline host: install DIR's wheels into a private folder, run the "
                             "bundle's selection on this interpreter (--use-current-python, --accelerator "
                             "auto) with DIR's data as the only source and no network, and pack the "
                             "results folder into one archive that --import-records reads; then exit")
    parser.add_argument("--results-dir", type=Path, default=REPOSITORY_ROOT / "results",
                        help="where records, executed notebooks and plots go (default results/)")
    parser.add_argument("--readme", type=Path, default=None,
                        help="README whose results section is regenerated, with the docs/ beside it "
                             "(default: README.md for the records of results/; with --results-dir DIR, "
                             "DIR/README.md where one exists, so that records elsewhere never rewrite "
                             "this repository's tables)")
    parser.add_argument("--notebooks-dir", type=Path, default=REPOSITORY_ROOT / "notebooks",
                        help=argparse.SUPPRESS)  # the fault tests point this at made-up notebooks
    parser.add_argument("--self-test", action="store_true",
                        help="run the test suite (pytest) in the runner's environment, then exit")
    arguments = parser.parse_args(argv)
    if arguments.readme is None:
        own_results = arguments.results_dir.resolve() == (REPOSITORY_ROOT / "results").resolve()
        arguments.readme = REPOSITORY_ROOT / "README.md" if own_results else arguments.results_dir / "README.md"
    if arguments.import_records is not None:
        source = arguments.import_records
        archive = source.name.endswith(".tar.gz") and source.is_file()
        if not archive and not (source / "records.jsonl" if source.is_dir() else source).is_file():
            parser.error(f"--import-records: no records.jsonl at {source}")
    elif arguments.bundle is not None or arguments.from_bundle is not None:
        pass  # the bundle's own checks (runner/bundle.py) say what is wrong, before any kernel starts
    elif not (arguments.list or arguments.self_test or arguments.docs or arguments.jupyter is not None):
        try:
            arguments.accelerator = resolve_accelerator(arguments.accelerator)
        except ValueError as error:
            parser.error(str(error))
    return arguments


def resolve_accelerator(requested):
    """'auto' becomes cuda or cpu by what nvidia-smi lists; cuda without a GPU is refused before
    anything is built or run, rather than timing the CPU under a GPU's name."""
    from common import probe

    found = probe.nvidia_smi_gpus()
    if requested == "auto":
        return "cuda" if found else "cpu"
    if requested == "cuda" and not found:
        raise ValueError("--accelerator cuda: nvidia-smi lists no GPU on this machine (is the "
                         "NVIDIA driver installed?); use --accelerator cpu to run on the CPU")
    return requested
