"""CapacityBuffers and the virtual pods they keep room for."""
