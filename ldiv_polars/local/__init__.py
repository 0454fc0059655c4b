"""Cell suppression and local recoding (transforms layer), on the distinct keys of a table."""
