"""Bottom layer: message model, ids, properties codec, errors. Standard library only."""
