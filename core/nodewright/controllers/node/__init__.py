"""Node controllers: termination (drain through the Eviction API) and repair."""
