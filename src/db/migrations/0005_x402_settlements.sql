-- x402 (issue 9): each settled payment (its own row, kept when the paid call did not commit) and the wallet refunds an operator sends by hand.
CREATE TABLE "x402_refunds" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"settlement_id" uuid NOT NULL,
	"customer_id" uuid NOT NULL,
	"envelope_id" uuid,
	"payer" text NOT NULL,
	"amount_micros" bigint NOT NULL,
	"original_tx_hash" text NOT NULL,
	"reason" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"refund_tx_hash" text,
	"completed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "x402_refunds_settlement_id_unique" UNIQUE("settlement_id")
);
--> statement-breakpoint
CREATE TABLE "x402_settlements" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"customer_id" uuid NOT NULL,
	"payer" text NOT NULL,
	"amount_micros" bigint NOT NULL,
	"amount" text NOT NULL,
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"tx_hash" text NOT NULL,
	"envelope_id" uuid,
	"request_id" text,
	"status" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "x402_settlements_tx_hash_unique" UNIQUE("tx_hash"),
	CONSTRAINT "x402_settlements_amount_positive" CHECK ("x402_settlements"."amount_micros" > 0)
);
--> statement-breakpoint
ALTER TABLE "x402_refunds" ADD CONSTRAINT "x402_refunds_settlement_id_x402_settlements_id_fk" FOREIGN KEY ("settlement_id") REFERENCES "public"."x402_settlements"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "x402_refunds" ADD CONSTRAINT "x402_refunds_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "x402_settlements" ADD CONSTRAINT "x402_settlements_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "x402_refunds_status_idx" ON "x402_refunds" USING btree ("status");--> statement-breakpoint
CREATE INDEX "x402_settlements_envelope_idx" ON "x402_settlements" USING btree ("envelope_id");