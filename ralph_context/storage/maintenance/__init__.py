"""Keeping the table fast as it grows: compaction, index refresh and cleanup each on its
cadence, the low-priority child that runs them and gives way to the loop, index deltas kept
few, LanceDB's caches bounded by the store's size."""
