import { ApiProperty } from '@nestjs/swagger';

/** spec: "Delete acknowledgement": `data` = `{ id, deleted: true }`. */
export class DeleteAcknowledgementDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: [true] }) deleted!: true;
}
