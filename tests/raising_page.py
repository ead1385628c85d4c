"""A page that fails, for tests/test_error_details.py: served with the repository's settings
(.streamlit/config.toml) as app.py is, it shows what a visitor would see of a failing page."""
import streamlit as st

st.title("A page that fails")
raise RuntimeError("internal detail: /srv/attention/secret-settings.toml")
