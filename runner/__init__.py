"""What only run_all.py needs (common is what notebooks import): the side-by-side reader."""
