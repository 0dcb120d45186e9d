"""The seam: the hook specifications, plugin loading, the registries and the catalog that resolves
what distributions register, and where moved paths and missing distributions are answered."""
