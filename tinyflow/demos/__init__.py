"""Demos runnable from the command line: `tinyflow demo boston`."""
