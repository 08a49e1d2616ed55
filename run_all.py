#!/usr/bin/env python3
"""Run the Rosetta Stone: every selected framework × task notebook, each on its framework's own
kernel, one record per run, the README tables and plots regenerated at the end.

  python3 run_all.py --list                                   what can run here
  python3 run_all.py --frameworks pytorch --profile quick     run, record, regenerate README
  python3 run_all.py --self-test                              the test suite
  python3 run_all.py --jupyter                                JupyterLab on the built kernels

This file only reads the options and hands over to the runner package, one stage a module:
runner/arguments.py   the options and their help (`--help`)
runner/matrix.py      --list: the framework × task matrix
runner/bootstrap.py   re-running this script inside the runner's environment (envs/runner.txt)
runner/session.py     a run: the plan (runner/plan.py) in rounds, peaks, summary; --measure-install
runner/notebook_run.py  one notebook: kernel, parameters, papermill, its record
runner/import_records.py  --import-records
runner/bundle.py      --bundle, --from-bundle: an offline GPU host in one call
runner/regenerate.py  --docs, and the end of every run: README tables, plots, docs/
runner/jupyter.py     --jupyter: JupyterLab, and the papermill line for one notebook
runner/self_test.py   --self-test: the tests, and what they cost (docs/test-costs.md)
"""
import sys

from runner.arguments import parse_arguments


def main(argv=None):
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    if arguments.list:
        from runner.matrix import print_matrix

        print_matrix(arguments.notebooks_dir, arguments.accelerator)
        return 0
    if arguments.from_bundle is not None:  # an offline host: no runner environment to build there
        from runner import bundle

        try:
            return bundle.run(arguments, sys.argv[1:] if argv is None else argv)
        except bundle.BundleError as error:
            sys.exit(f"[bundle] {error}")
    from runner import bootstrap

    if arguments.self_test:
        from runner import self_test

        # Started beside the build of the runner's own environment; this process keeps its pid
        # through the re-execution in that environment.
        self_test.start_builds()
    bootstrap.ensure_runner_environment(arguments, __file__)
    bootstrap.redirect_runner_home()
    if arguments.self_test:
        return self_test.run()
    if arguments.jupyter is not None:
        from runner import jupyter

        return jupyter.serve(arguments.jupyter)
    if arguments.bundle is not None:
        from runner import bundle

        try:
            bundle.make(arguments)
        except bundle.BundleError as error:
            sys.exit(f"[bundle] {error}")
        return 0
    if arguments.docs or arguments.import_records is not None:
        from runner.import_records import import_records
        from runner.regenerate import regenerate

        if arguments.import_records is not None:
            import_records(arguments.import_records, arguments.results_dir.resolve())
        regenerate(arguments.results_dir.resolve(), arguments.readme, arguments.notebooks_dir)
        return 0
    from runner.session import Session

    return Session(arguments).measure_install() if arguments.measure_install else Session(arguments).run()


if __name__ == "__main__":
    sys.exit(main())
