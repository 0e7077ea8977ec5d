"""SGLang knowledge as data, shared by preflight (before a start) and the classifier (after)."""
