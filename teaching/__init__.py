"""Teaching content in numpy alone (no torch, no Streamlit): the exercises and how they are
checked, the worked example's small attention computations, and the multi-head demo."""
