"""Tests of whole processes: installs from wheels, samples, worker processes, faults and long seeded schedules."""
