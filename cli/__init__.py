"""The `dyn` command line: a thin Click layer over dynlib."""
