ALTER TABLE "api_keys" ADD COLUMN "label" text;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "redelivery_of" uuid;