"""The parts of the fake Kubernetes API server (``tests/kube/fake_apiserver.py``): its HTTP
handler and the API server rules it keeps, one concept per module."""
