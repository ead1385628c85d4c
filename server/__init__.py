"""The server's own modules, apart from the pages: every ``ATTN_EXPLORER_*`` setting
(``settings``), what one process shares out among its sessions (``limits``: decoding slots,
the live-training queue), and the start-up warm-up the first page waits on (``loading``).
Nothing here draws a widget; the pages in ``app_pages/`` import from here."""
