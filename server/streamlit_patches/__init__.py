"""The one door to Streamlit's private internals, by concern:

- :mod:`~server.streamlit_patches.patches`: every change to Streamlit's runtime, each a record
  (targets, why, the Streamlit it was written for, ``apply()``/``undo()``);
- :mod:`~server.streamlit_patches.reads`: what the rest of the code reads of Streamlit's runtime,
  as small public functions; the two private reads switchable records like the patches;
- :mod:`~server.streamlit_patches.fingerprints`: the Streamlit version and the fingerprint of each
  target's source that a patch or read was written against;
- :mod:`~server.streamlit_patches.switch`: which of them ``ATTN_EXPLORER_STREAMLIT_PATCHES`` chooses;
- :mod:`~server.streamlit_patches.testing`: what the suite's AppTests share (the app never calls it).

Nowhere else in the app is a private name of Streamlit's used (``tests/test_code_shape.py``);
``server/serving.py`` applies the chosen patches and reads at start-up.
"""
