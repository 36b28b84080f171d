"""The Broker: a MessageStore served over the remoting protocol."""
