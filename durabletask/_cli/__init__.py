"""The ``durabletask`` operator command line: argument parsing, commands and output rendering."""
