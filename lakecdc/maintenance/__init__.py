"""Table maintenance: compaction and cleanup of the tables ingest writes (``lakecdc maintain``).

Every silver MERGE adds files: Iceberg (merge-on-read) adds position-delete files, delta-rs
(copy-on-write) rewrites the files it touches into new small ones; bronze and the delete ledger
grow by small appends. Maintenance folds them back, per table, with the formats' own operations:

- ``iceberg``: ``rewrite_data_files`` (files with position deletes and small files; key-sorted
  tables sorted by key), removal of the delete files left dangling, ``expire_snapshots``,
  optionally ``remove_orphan_files`` (Spark procedures, ``lakecdc.maintenance.iceberg``);
- ``delta``: ``optimize.compact`` (key-sorted tables ``optimize.z_order`` by key), ``vacuum``,
  ``cleanup_metadata`` (delta-rs, ``lakecdc.maintenance.delta``).

Maintenance commits carry no lakecdc progress; readers walk back past them to the newest lakecdc
commit, and maintenance never expires that commit, so a restart resumes where it would have.
"""
