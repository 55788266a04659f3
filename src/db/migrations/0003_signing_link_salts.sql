-- Signing links become HMAC(SIGNING_LINK_SECRET, a random per-recipient salt) (DESIGN §4.6).
ALTER TABLE "engine_recipients" ADD COLUMN "link_salt" text;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "legacy_token_hash" text;--> statement-breakpoint
-- Every existing recipient gets its salt (two v4 UUIDs: 244 random bits; gen_random_uuid is core since
-- PostgreSQL 13). The hash of its old link moves to legacy_token_hash, which is still accepted, and
-- token_hash is written when its new link is first derived (SQL does not know SIGNING_LINK_SECRET).
UPDATE "engine_recipients" SET "link_salt" = replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', ''), "legacy_token_hash" = "token_hash", "token_hash" = NULL;--> statement-breakpoint
ALTER TABLE "engine_recipients" ALTER COLUMN "link_salt" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD CONSTRAINT "engine_recipients_legacy_token_hash_unique" UNIQUE("legacy_token_hash");
