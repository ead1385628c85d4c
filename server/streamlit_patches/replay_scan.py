"""What a recorded run may share (``replay.py``): only elements of the kinds a replay copies
whole, and the student's own words in one text element at most."""
from __future__ import annotations

# the elements a shareable run may draw: text, equations, figures, tables and plain widgets; nothing
# that registers a file, a data frame's lazy source or a component with the session, but a download
# made when clicked (its callable is registered again for each replayed session)
SHAREABLE = frozenset({"markdown", "heading", "html", "alert", "empty", "plotly_chart", "button",
                       "button_group", "number_input", "radio", "selectbox", "slider", "text_input", "text_area",
                       "checkbox", "progress", "code", "page_link", "multiselect", "dataframe", "download_button"})


def scan(messages: list, words: tuple[str, ...], refused: tuple[str, ...]) -> tuple[bool, int | None]:
    """May a run that sent ``messages`` be shared, and which message holds the student's first
    word (their nickname; None: none)? Only elements of the shared kinds, no fragment timer, no
    reference to a message one browser keeps, no refused word, the first word in one text element
    at most and the others in none."""
    words_b, refused_b = [w.encode() for w in words if w], [w.encode() for w in refused]
    personal_at = None
    for i, msg in enumerate(messages):
        kind = msg.WhichOneof("type")
        element = msg.delta.new_element.WhichOneof("type") \
            if kind == "delta" and msg.delta.WhichOneof("type") == "new_element" else None
        if kind in ("auto_rerun", "ref_hash") or element is not None and element not in SHAREABLE:
            return False, None  # a fragment on a timer, a message the browser keeps, or an element that is more than its state
        if element == "download_button" and (msg.delta.new_element.download_button.url
                                             or not msg.delta.new_element.download_button.deferred_file_id):
            return False, None  # a file kept for this session, not made when clicked
        if element == "dataframe" and msg.delta.new_element.dataframe.HasField("lazy_data"):
            return False, None  # its rows are fetched from a source registered for this session
        raw = msg.SerializeToString()
        if any(w in raw for w in refused_b):
            return False, None
        found = [w for w in words_b if w in raw]
        if not found:
            continue
        if found != words_b[:1] or personal_at is not None or kind != "delta" \
                or msg.delta.new_element.WhichOneof("type") != "markdown":
            return False, None  # the student's id, or their name outside the one text it may be in
        personal_at = i
    return True, personal_at
