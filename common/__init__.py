"""Shared by every notebook and the runner: parameters, data, shared weights and the numpy
reference, timing, hardware probe, records, tables. numpy and the standard library only."""
