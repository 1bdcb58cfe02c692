"""The external-backend switch against a separately started emulator."""
