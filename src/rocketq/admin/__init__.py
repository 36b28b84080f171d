"""``rocketq admin``: the mqadmin commands, over ``rocketq.client.admin.AdminClient``."""
