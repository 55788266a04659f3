-- x402 (issue 32): a settlement is written down as pending before the settle, keyed by its authorization (payer, nonce), and resolved after; its tx hash is known only then.
ALTER TABLE "x402_settlements" ALTER COLUMN "tx_hash" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "x402_settlements" ADD COLUMN "nonce" text;--> statement-breakpoint
ALTER TABLE "x402_settlements" ADD COLUMN "valid_before" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "x402_settlements_authorization_uq" ON "x402_settlements" USING btree ("network","asset","payer","nonce");--> statement-breakpoint
CREATE INDEX "x402_settlements_status_idx" ON "x402_settlements" USING btree ("status","created_at");