"""Client internals: sans-IO request builders and response parsers, then thin sync and async shells."""
