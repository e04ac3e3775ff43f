"""Models: resolution of model names (bundled aliases, local folders, hub ids) and weight hashing
(:mod:`.resolve`), the precision/backend rule (:mod:`.precision`), CPU capability (:mod:`.cpu`), the
training record of fine-tuned folders (:mod:`.training_record`), and the bi-encoder (:mod:`.encoders`)
and cross-encoder (:mod:`.cross_encoders`) backends side by side (torch, OpenVINO, ONNX, API).
Library versions are looked up in :mod:`bakeoff.library_versions`."""
