"""The commit graph's steps, one module each."""
