"""What several layers of the suite share: Azurite, an OTLP receiver, the external-backend switch."""
