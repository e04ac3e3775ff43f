"""Models: resolution of model names (bundled aliases, local folders, hub ids), weight hashing,
version lookup, and the bi-encoder and cross-encoder backends (torch, OpenVINO, ONNX, API)."""
