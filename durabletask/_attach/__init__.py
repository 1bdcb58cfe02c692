"""Carrier-run attach: instance fingerprints recorded in tags, and the attach decision for an existing instance."""
