"""The server's own modules, apart from the pages; nothing here draws a widget.

- ``settings``: every ``ATTN_EXPLORER_*`` setting, in one place;
- ``limits``: page-run and decoding slots in turn, each tab's rates; ``training_queue``: live
  training's turns; ``sign_in``: wrong teacher keys; ``proxies``: whose word on an address counts;
- ``class_store`` (a package): classes, rosters, answers and what the teacher sent, in SQLite or
  PostgreSQL; ``answers``: what an answer is and the teacher's count; ``identity``: the signed
  student and teacher cookies; ``follow``: following the teacher, one read per process;
- ``serving``: Streamlit's runtime for a class; ``shared``: one model zoo, store and set of
  slots per process; ``loading``: the start-up warm-up the first page waits on; ``lecture``:
  several app processes behind HAProxy.
"""
