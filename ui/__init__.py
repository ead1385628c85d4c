"""Streamlit parts the pages share (``app_pages/`` holds the pages only): the model zoo's
cache and pickers, widgets, figure export, example sentences, the URL state, the class
panel, the teaching pages' shared caches and the lesson's stops. Sits above ``model/``,
``viz/``, ``teaching/`` and ``server/``, below ``app_pages/``; nothing is re-exported."""
