"""The data loaders: each data set's ordered sources (with checksums) and its reader. `common.data`
is what notebooks call; `sources` fetches and caches the files."""
