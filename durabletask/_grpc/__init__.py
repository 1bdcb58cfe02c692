"""gRPC plumbing: channel setup, the one status-to-error mapping, and proto/model conversion."""
