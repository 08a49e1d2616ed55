"""What only run_all.py needs (common is what notebooks import), one stage a module: arguments,
bootstrap (the runner's environment), matrix (--list), plan, session, notebook_run, execute (the
papermill process), import_records, regenerate (README tables, plots and docs/, with report,
plots, reader, margins, install_costs, plain_loops), jupyter (--jupyter), environments and
frameworks."""
