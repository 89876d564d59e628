"""A store on object storage shared by replicas: the maintenance lease, the one committer
the others forward their writes to, and the rows each keeps by address."""
