"""``lakecdc demo``: capture and ingest side by side on the local stack (see ``runner``)."""
