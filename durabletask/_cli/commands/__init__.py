"""The command line's commands, one module per group; each module adds its parsers or handlers."""
