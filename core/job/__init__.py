"""The score job (``rewardkit score``): data, resumable output, the answer journal, provenance,
progress, the summary plot and text tables."""
