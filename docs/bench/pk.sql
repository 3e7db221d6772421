SELECT fencing_token FROM floor.ops WHERE key = 'hot';
