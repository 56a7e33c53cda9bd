"""Tools around the consumer: the ``asyncconsumer`` command, its small admin client, the embedded broker launcher."""
