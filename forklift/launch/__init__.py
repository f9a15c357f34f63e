"""launch: profiles -> exact argv + env, supervised boot, boot facts from the log, clean stop."""
