"""The external-backend switch on an emulator of its own."""
