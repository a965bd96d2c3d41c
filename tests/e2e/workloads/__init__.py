"""Workload generators for the end-to-end tests; each records the changes it made (``changelog``)."""
