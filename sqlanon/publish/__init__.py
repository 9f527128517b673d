"""Publishing a release: the rules relation, the live view or snapshot, the manifest and the
independent verification that fails closed."""
