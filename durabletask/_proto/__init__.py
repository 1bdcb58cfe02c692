"""Generated protobuf and gRPC stubs (``make proto``); never edited by hand."""
