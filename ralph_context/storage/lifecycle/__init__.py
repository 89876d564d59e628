"""Where items go when they leave the hot table: the archive (moved items and the originals
of summaries), and the tombstones a forget leaves so nothing brings the forgotten back."""
