"""LogMiner: the mining session (``session``), the ``V$LOGMNR_CONTENTS`` query (``query``), the
``SQL_REDO`` parser (``dml_parser``) and the buffer of uncommitted transactions (``transactions``)."""
