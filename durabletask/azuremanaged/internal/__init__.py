"""Import paths kept for code written against the compatible API's ``azuremanaged.internal`` modules."""
