"""The table side: what a change becomes in the lake, whichever engine writes it.

The batch layout and every metadata column name (``lake.layout``), bronze identity, silver
preparation, the MERGE plan, key moves and key ranges, schema evolution, SCD2 history and the commit
progress that makes a restart exact. ``lakecdc.ingest`` (reading, decoding, ordering, transactions,
the job loop) and ``lakecdc.writers`` (the engines) both build on it; it imports neither.
"""
