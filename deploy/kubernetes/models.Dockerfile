# A model repository as an image, for the init-copy and llm overlays: their init container copies
# /models of this image into the pod's emptyDir. The build context is the repository folder:
#   docker build -f deploy/kubernetes/models.Dockerfile -t inferloop-models:0.1.0 examples/model_repository
FROM debian:12-slim
COPY --chown=10001:10001 . /models
USER 10001:10001
