"""Request resolution: turn the caller's arguments (or a release file) into a validated
:class:`~sqlanon.request.spec.Spec` before any work, asking the engine's catalog."""
