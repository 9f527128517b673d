"""Single-dimensional recoding: every QI is generalized the same way in every row."""
